// Word lists the synthetic dataset draws from. Names are common given and family names; the
// companies, investors and schools are invented so no record describes a real person or firm.

export const FIRST_NAMES = [
  'James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth',
  'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen',
  'Christopher', 'Lisa', 'Daniel', 'Nancy', 'Matthew', 'Betty', 'Anthony', 'Sandra', 'Mark', 'Margaret',
  'Donald', 'Ashley', 'Steven', 'Kimberly', 'Andrew', 'Emily', 'Paul', 'Donna', 'Joshua', 'Michelle',
  'Kenneth', 'Carol', 'Kevin', 'Amanda', 'Brian', 'Melissa', 'George', 'Deborah', 'Timothy', 'Stephanie',
  'Ronald', 'Rebecca', 'Jason', 'Laura', 'Edward', 'Sharon', 'Jeffrey', 'Cynthia', 'Ryan', 'Kathleen',
  'Jacob', 'Amy', 'Gary', 'Angela', 'Nicholas', 'Shirley', 'Eric', 'Anna', 'Jonathan', 'Brenda',
  'Stephen', 'Pamela', 'Larry', 'Emma', 'Justin', 'Nicole', 'Scott', 'Helen', 'Brandon', 'Samantha',
  'Benjamin', 'Katherine', 'Samuel', 'Christine', 'Gregory', 'Debra', 'Alexander', 'Rachel', 'Patrick', 'Carolyn',
  'Frank', 'Janet', 'Raymond', 'Maria', 'Jack', 'Olivia', 'Dennis', 'Heather', 'Jerry', 'Diane',
  'Tyler', 'Julie', 'Aaron', 'Joyce', 'Jose', 'Victoria', 'Adam', 'Ruth', 'Nathan', 'Virginia',
  'Henry', 'Lauren', 'Zachary', 'Kelly', 'Douglas', 'Christina', 'Peter', 'Joan', 'Kyle', 'Evelyn',
  'Noah', 'Judith', 'Ethan', 'Andrea', 'Jeremy', 'Hannah', 'Walter', 'Megan', 'Christian', 'Cheryl',
  'Keith', 'Jacqueline', 'Roger', 'Martha', 'Terry', 'Madison', 'Austin', 'Teresa', 'Sean', 'Gloria',
  'Priya', 'Arjun', 'Wei', 'Mei', 'Hiroshi', 'Yuki', 'Lukas', 'Sofia', 'Mateo', 'Lucia',
  'Omar', 'Fatima', 'Ahmed', 'Aisha', 'Ivan', 'Olga', 'Pierre', 'Camille', 'Giulia', 'Marco',
] as const;

export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Gomez', 'Phillips', 'Evans', 'Turner', 'Diaz', 'Parker', 'Cruz', 'Edwards', 'Collins', 'Reyes',
  'Stewart', 'Morris', 'Morales', 'Murphy', 'Cook', 'Rogers', 'Gutierrez', 'Ortiz', 'Morgan', 'Cooper',
  'Peterson', 'Bailey', 'Reed', 'Kelly', 'Howard', 'Ramos', 'Kim', 'Cox', 'Ward', 'Richardson',
  'Watson', 'Brooks', 'Chavez', 'Wood', 'James', 'Bennett', 'Gray', 'Mendoza', 'Ruiz', 'Hughes',
  'Price', 'Alvarez', 'Castillo', 'Sanders', 'Patel', 'Myers', 'Long', 'Ross', 'Foster', 'Jimenez',
  'Powell', 'Jenkins', 'Perry', 'Russell', 'Sullivan', 'Bell', 'Coleman', 'Butler', 'Henderson', 'Barnes',
  'Fischer', 'Schmidt', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Dubois', 'Moreau', 'Laurent', 'Rossi',
  'Russo', 'Ferrari', 'Esposito', 'Tanaka', 'Suzuki', 'Sato', 'Wang', 'Li', 'Zhang', 'Chen',
  'Singh', 'Kumar', 'Sharma', 'Khan', 'Ali', 'Ivanov', 'Novak', 'Kowalski', 'Jansen', 'De Vries',
] as const;

export const LOCATIONS = [
  { city: 'San Francisco', region: 'California', country: 'United States', cc: '1' },
  { city: 'New York', region: 'New York', country: 'United States', cc: '1' },
  { city: 'Austin', region: 'Texas', country: 'United States', cc: '1' },
  { city: 'Seattle', region: 'Washington', country: 'United States', cc: '1' },
  { city: 'Boston', region: 'Massachusetts', country: 'United States', cc: '1' },
  { city: 'Chicago', region: 'Illinois', country: 'United States', cc: '1' },
  { city: 'Denver', region: 'Colorado', country: 'United States', cc: '1' },
  { city: 'Atlanta', region: 'Georgia', country: 'United States', cc: '1' },
  { city: 'Toronto', region: 'Ontario', country: 'Canada', cc: '1' },
  { city: 'Vancouver', region: 'British Columbia', country: 'Canada', cc: '1' },
  { city: 'London', region: 'England', country: 'United Kingdom', cc: '44' },
  { city: 'Manchester', region: 'England', country: 'United Kingdom', cc: '44' },
  { city: 'Dublin', region: 'Leinster', country: 'Ireland', cc: '353' },
  { city: 'Berlin', region: 'Berlin', country: 'Germany', cc: '49' },
  { city: 'Munich', region: 'Bavaria', country: 'Germany', cc: '49' },
  { city: 'Paris', region: 'Ile-de-France', country: 'France', cc: '33' },
  { city: 'Amsterdam', region: 'North Holland', country: 'Netherlands', cc: '31' },
  { city: 'Madrid', region: 'Madrid', country: 'Spain', cc: '34' },
  { city: 'Barcelona', region: 'Catalonia', country: 'Spain', cc: '34' },
  { city: 'Milan', region: 'Lombardy', country: 'Italy', cc: '39' },
  { city: 'Stockholm', region: 'Stockholm', country: 'Sweden', cc: '46' },
  { city: 'Zurich', region: 'Zurich', country: 'Switzerland', cc: '41' },
  { city: 'Warsaw', region: 'Masovia', country: 'Poland', cc: '48' },
  { city: 'Tel Aviv', region: 'Tel Aviv', country: 'Israel', cc: '972' },
  { city: 'Dubai', region: 'Dubai', country: 'United Arab Emirates', cc: '971' },
  { city: 'Bangalore', region: 'Karnataka', country: 'India', cc: '91' },
  { city: 'Singapore', region: 'Singapore', country: 'Singapore', cc: '65' },
  { city: 'Tokyo', region: 'Tokyo', country: 'Japan', cc: '81' },
  { city: 'Sydney', region: 'New South Wales', country: 'Australia', cc: '61' },
  { city: 'Sao Paulo', region: 'Sao Paulo', country: 'Brazil', cc: '55' },
] as const;

export const SENIORITIES = ['', '', '', 'Senior ', 'Lead ', 'Principal ', 'Head of ', 'VP of ', 'Director of '] as const;

/** Job functions: `role` is the noun used in titles, `area` the department word. */
export const FUNCTIONS = [
  { role: 'Software Engineer', area: 'Engineering' },
  { role: 'Data Scientist', area: 'Data' },
  { role: 'Data Engineer', area: 'Data' },
  { role: 'Product Manager', area: 'Product' },
  { role: 'Product Designer', area: 'Design' },
  { role: 'Account Executive', area: 'Sales' },
  { role: 'Sales Manager', area: 'Sales' },
  { role: 'Marketing Manager', area: 'Marketing' },
  { role: 'Growth Marketer', area: 'Marketing' },
  { role: 'Recruiter', area: 'People' },
  { role: 'HR Business Partner', area: 'People' },
  { role: 'Financial Analyst', area: 'Finance' },
  { role: 'Controller', area: 'Finance' },
  { role: 'DevOps Engineer', area: 'Infrastructure' },
  { role: 'Security Engineer', area: 'Security' },
  { role: 'Customer Success Manager', area: 'Customer Success' },
  { role: 'Solutions Architect', area: 'Engineering' },
  { role: 'Operations Manager', area: 'Operations' },
  { role: 'Legal Counsel', area: 'Legal' },
  { role: 'Research Scientist', area: 'Research' },
] as const;

export const EXECUTIVE_TITLES = ['Founder', 'Co-Founder', 'CEO', 'CTO', 'CFO', 'COO', 'CMO'] as const;

export const INDUSTRIES = [
  'Software', 'Fintech', 'Healthcare', 'Biotechnology', 'E-commerce', 'Logistics', 'Cybersecurity',
  'Education', 'Energy', 'Media', 'Real Estate', 'Manufacturing', 'Insurance', 'Gaming', 'Travel',
  'Automotive', 'Telecommunications', 'Retail', 'Consulting', 'Agriculture',
] as const;

export const COMPANY_PREFIXES = [
  'Blue', 'North', 'Bright', 'Quantum', 'Silver', 'Iron', 'Green', 'Rapid', 'Clear', 'True',
  'Cedar', 'Summit', 'Nova', 'Vertex', 'Harbor', 'Atlas', 'Lumen', 'Pixel', 'Signal', 'Orbit',
  'Maple', 'Granite', 'Falcon', 'Beacon', 'Cobalt', 'Horizon', 'Echo', 'Prism', 'Stellar', 'Aurora',
] as const;

export const COMPANY_SUFFIXES = [
  'Labs', 'Systems', 'Works', 'Analytics', 'Health', 'Logistics', 'Networks', 'Dynamics', 'Bio', 'Pay',
  'Cloud', 'Robotics', 'Energy', 'Media', 'Foods', 'Capital', 'Security', 'Learning', 'Mobility', 'Data',
] as const;

export const COMPANY_FORMS = ['', '', ' Inc.', ' Ltd', ' GmbH', ' Group', ' Co.'] as const;

export const TLDS = ['com', 'com', 'com', 'io', 'co', 'ai', 'net'] as const;

export const FUNDING_STAGES = ['pre_seed', 'seed', 'series_a', 'series_b', 'series_c', 'series_d', 'ipo'] as const;

export const INVESTORS = [
  'Redwood Ventures', 'Granite Peak Capital', 'Lighthouse Partners', 'Northstar Ventures', 'Bluewater Capital',
  'Summit Growth', 'Open Field Ventures', 'Meridian Capital', 'Foundry Square', 'Keystone Partners',
  'Harborview Ventures', 'Tidewater Capital', 'First Light Fund', 'Cascade Ventures', 'Ironbridge Capital',
] as const;

export const SCHOOLS = [
  'Northfield University', 'Lakeside Institute of Technology', 'Westbrook College', 'Riverside State University',
  'Eastgate University', 'Highland Polytechnic', 'Kingsbridge University', 'Southport College',
  'Central Metropolitan University', 'Pinecrest University',
] as const;

export const PHONE_TYPES = ['mobile', 'work', 'landline'] as const;
export const SOCIAL_PLATFORMS = ['linkedin', 'twitter', 'github', 'instagram', 'facebook'] as const;
export const EMAIL_PROVIDERS = ['gmail.com', 'outlook.com', 'yahoo.com', 'proton.me', 'icloud.com'] as const;

export const POST_TOPICS = [
  'hiring for our team', 'lessons from shipping a big launch', 'a conference talk recap',
  'thoughts on remote work', 'our latest funding news', 'a new open-source release',
  'what I learned mentoring juniors', 'a customer success story', 'industry trends this quarter',
  'a book recommendation', 'celebrating a work anniversary', 'a product demo video',
] as const;

export const INTERESTS = [
  'machine learning', 'cycling', 'photography', 'open source', 'climate tech', 'public speaking',
  'chess', 'startups', 'running', 'design systems', 'cooking', 'venture capital', 'music', 'travel',
] as const;
